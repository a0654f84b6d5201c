# Repo health: real commands over this repository, summarised by an engine.
#
#   bin/obversa plugin lock examples/repo-health/run.hcl
#   bin/obversa run --progress examples/repo-health/run.hcl
#
# The data nodes run through cmd-engine in the workspace (the repository
# root); the summary runs on the mock engine by default. README.md shows the
# blocks that point the lane at a real agent CLI instead.

workspace {
  root          = "../.."
  provider      = "none"
  allow_outside = true # the repository root is above this file's directory
}

storage {
  directory = ".obversa"
}

limits {
  timeout = "15m"
}

plugin "mock" {
  type = "engine"
  path = "../../bin/mock-engine"
}

plugin "shell" {
  type = "node"
  path = "../../bin/cmd-engine"
  # Plugins write only the workspace, the run's scratch directory and their
  # state directory (docs/confinement.md); go vet keeps its build cache in
  # the user's cache directory.
  confine {
    write = ["~/.cache/go-build"]
  }
}

lane "summary" {
  requested = { adapter = "mock", provider = "local", model_family = "scripted", model = "m1", tools = [] }
}

graph "dag" {
  global_concurrency = 4

  node "history" {
    binding    = "shell"
    input      = { command = ["git", "log", "--oneline", "-n", "10"] }
    retry_safe = true
  }

  # go vet's findings are data for the summary, not a reason to stop:
  # the node reports them and the exit status on stdout.
  node "vet" {
    binding    = "shell"
    input      = { command = ["sh", "-c", "go vet ./... 2>&1; echo \"go vet exit status: $?\""], timeout = "10m" }
    retry_safe = true
    timeout    = "11m"
  }

  node "format" {
    binding    = "shell"
    input      = { command = ["gofmt", "-l", "."] }
    retry_safe = true
  }

  node "files" {
    binding    = "shell"
    input      = { command = ["sh", "-c", "git ls-files | wc -l"] }
    retry_safe = true
  }

  node "summary" {
    lane       = "summary"
    depends_on = ["history", "vet", "format", "files"]
    prompt     = <<-EOT
      Summarise the health of this repository in three lines.
      Tracked files: ${input.results.files.stdout}
      Recent commits:
      ${input.results.history.stdout}
      Files gofmt would change: ${input.results.format.stdout}
      go vet said: ${input.results.vet.stdout}
    EOT
  }
}
