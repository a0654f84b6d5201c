# A graph on an engine written in JavaScript (examples/plugins/node-engine):
# the plugin protocol is gRPC, so the host cannot tell it from a Go plugin.
#
#   (cd examples/plugins/node-engine && npm ci --ignore-scripts && node build.js)
#   bin/obversa plugin lock examples/node-engine/run.hcl
#   bin/obversa run --progress examples/node-engine/run.hcl
#
# The lane's preflight checks the engine statically (Admit) and with one
# live probe before any node runs.

workspace {
  root     = "."
  provider = "none"
}

storage {
  directory = ".obversa"
}

plugin "node" {
  type   = "engine"
  path   = "../../bin/node-engine"
  config = { answer_prefix = "[node] " }
}

lane "writer" {
  requested = { adapter = "node", provider = "local", model_family = "echo", model = "echo-1", tools = [] }
  preflight {
    live               = "required"
    unsupported_static = "block"
  }
}

graph "dag" {
  global_concurrency = 2

  node "draft" {
    lane   = "writer"
    prompt = "Write a haiku about durable logs."
  }

  node "critique" {
    lane       = "writer"
    depends_on = ["draft"]
    prompt     = "Critique this draft in one line: ${input.results.draft}"
  }

  node "report" {
    kind   = "finalizer"
    lane   = "writer"
    prompt = "Summarise: the draft was ${input.results.draft}; the critique was ${input.results.critique}"
  }
}
