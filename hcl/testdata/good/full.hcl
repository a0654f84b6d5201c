# Every block and attribute of a run file, with non-default values.
workspace {
  root     = "work"
  provider = "git"
}

storage {
  directory                        = "/var/lib/obversa"
  namespace                        = "team-a"
  max_event_payload_bytes          = 1024
  max_batch_bytes                  = 2000
  max_artifact_bytes               = 3000
  max_total_artifact_bytes_per_run = 4000
  known_secrets_from_env           = ["ANTHROPIC_API_KEY", "GH_TOKEN"]
}

limits {
  timeout        = "1h30m"
  max_dispatches = 50
  plugin_memory  = "512MiB"
}

restart {
  max_restarts    = 0
  initial_backoff = "250ms"
  max_backoff     = "2s"
}

teardown_grace = "0s"

preflight {
  timeout = "45s"
}

trusted_keys = ["keys/release.pub"]

plugin "claude" {
  type         = "engine"
  path         = "bin/cmd-engine"
  sha256       = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
  args         = ["--verbose"]
  env          = { LOG_LEVEL = "debug" }
  config       = { command = ["claude", "-p", "--output-format", "json"], retries = 2 }
  trusted_keys = ["RWQf6LRCGA9i53mlYecO4IzT51TGPpvWucNSCh1CBM0QTaLn73Y7GFO3"]
  start_timeout = "2m"
}

plugin "mock" {
  type = "engine"
  path = "/opt/obversa/mock-engine"
}

plugin "shell" {
  type = "node"
  path = "bin/cmd-engine"
}

lane "writer" {
  requested           = { adapter = "claude", provider = "anthropic", model_family = "claude", model = "sonnet", tools = ["bash"] }
  known_substitutions = [{ adapter = "claude", provider = "anthropic", model_family = "claude", model = "sonnet-4", tools = [] }]
  fallbacks           = [{ adapter = "mock", provider = "local", model_family = "scripted", model = "m1", tools = [] }]
  preflight {
    live               = "required"
    unsupported_static = "allow"
  }
}

graph "dag" {
  global_concurrency = 8
  keyed_concurrency  = { repo = 1, api = 3 }
  stop_on_error      = true
  retry_cap_per_node = 2
  approval           = ["vet"]

  node "draft" {
    lane       = "writer"
    prompt     = "Write a haiku about durable logs."
    retry_safe = false
    timeout    = "10m"
    key        = "api"
  }
  node "vet" {
    kind       = "optional"
    binding    = "shell"
    depends_on = ["draft"]
    input      = { command = ["go", "vet", "./..."], stdin = "${input.results.draft}" }
    retry_safe = true
    key        = "repo"
  }
  node "publish" {
    binding    = "shell"
    depends_on = ["vet"]
    input      = input.results.vet
    approval   = true
  }
  node "report" {
    kind        = "finalizer"
    lane        = "writer"
    prompt_file = "prompts/report.md"
  }
}

plugin "sandboxed" {
  type = "node"
  path = "bin/cmd-engine"
  confine {
    write     = ["cache", "~/.cache/tool", "/tmp/shared"]
    deny_read = ["~/.ssh"]
    network   = true
    memory    = "1.5GiB"
    required  = true
  }
}
