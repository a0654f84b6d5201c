# Quickstart: a three-node graph on the mock engine. No network, no API key.
#
#   make demo          # builds, pins (obversa.lock.hcl) and runs this file
#
# draft   — an engine node: the mock engine answers the prompt.
# count   — a data node: cmd-engine runs `wc -w` on the draft.
# report  — a finalizer: runs last, on success and on failure, and reads
#           the results of the nodes that passed.

workspace {
  root     = "."
  provider = "none"
}

storage {
  directory = ".obversa"
}

plugin "mock" {
  type = "engine"
  path = "../../bin/mock-engine"
}

plugin "shell" {
  type = "node"
  path = "../../bin/cmd-engine"
}

lane "writer" {
  requested = { adapter = "mock", provider = "local", model_family = "scripted", model = "m1", tools = [] }
}

graph "dag" {
  global_concurrency = 2

  node "draft" {
    lane   = "writer"
    prompt = "Write a haiku about durable logs."
  }

  node "count" {
    binding    = "shell"
    depends_on = ["draft"]
    input      = { command = ["wc", "-w"], stdin = "${input.results.draft}" }
    retry_safe = true
  }

  node "report" {
    kind   = "finalizer"
    lane   = "writer"
    prompt = "Summarise in one line: the draft was \"${input.results.draft}\"; wc -w said ${input.results.count.stdout}"
  }
}
