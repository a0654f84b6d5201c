# A graph on an engine written in Python (examples/plugins/python-engine),
# on Debian's python3-grpcio and python3-protobuf: the plugin protocol is
# gRPC, so the host cannot tell it from a Go plugin.
#
#   /usr/bin/python3 examples/plugins/python-engine/build.py
#   bin/obversa plugin lock examples/python-engine/run.hcl
#   bin/obversa run --progress examples/python-engine/run.hcl
#
# The engine fails the way a hosted model API does, with typed failures the
# host routes on:
# - auth: the provider "hosted" needs an API key in HOSTED_API_KEY, which
#   the plugin does not get (no pass_env). Preflight's static check (Admit)
#   fails auth, the host retires adapter python + provider hosted, and the
#   lane "writer" goes on with its fallback on the provider "local".
# - rate_limit: the model "echo-mini" allows one Run a minute. The optional
#   node "tagline" is its second Run: it fails rate_limit with the time until
#   the next Run is allowed (retry_after_ms), and the run still completes.

workspace {
  root     = "."
  provider = "none"
}

storage {
  directory = ".obversa"
}

plugin "python" {
  type = "engine"
  path = "../../bin/python-engine"
  config = {
    answer_prefix = "[python] "
    api_keys      = { hosted = "HOSTED_API_KEY" }
    rate_limits   = { "echo-mini" = 1 }
  }
}

lane "writer" {
  requested = { adapter = "python", provider = "hosted", model_family = "echo", model = "echo-1", tools = [] }
  fallbacks = [
    { adapter = "python", provider = "local", model_family = "echo", model = "echo-1", tools = [] },
  ]
  preflight {
    live               = "skip"
    unsupported_static = "block"
  }
}

lane "quick" {
  requested = { adapter = "python", provider = "local", model_family = "echo", model = "echo-mini", tools = [] }
}

graph "dag" {
  global_concurrency = 2

  node "draft" {
    lane   = "writer"
    prompt = "Write a haiku about durable logs."
  }

  node "title" {
    kind       = "optional"
    lane       = "quick"
    depends_on = ["draft"]
    prompt     = "Give this haiku a title: ${input.results.draft}"
  }

  node "tagline" {
    kind       = "optional"
    lane       = "quick"
    depends_on = ["title"]
    prompt     = "Give this haiku a tagline: ${input.results.draft}"
  }

  node "report" {
    kind   = "finalizer"
    lane   = "writer"
    prompt = "Summarise: the draft was ${input.results.draft}"
  }
}
