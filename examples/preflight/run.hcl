# Preflight: check the engine before anything is dispatched.
#
# The mock engine answers a live preflight call only while ready.txt holds
# "ready"; every call it receives is appended to calls.log. Both paths are
# relative to the directory obversa runs in (the example program rewrites
# them to its temporary directory).

preflight {
  timeout = "20s" # each probe: health, Admit, the live call
}

plugin "mock" {
  type   = "engine"
  path   = "../../bin/mock-engine"
  config = { calls_log = "calls.log", ready_file = "ready.txt" }
}

lane "writer" {
  requested = { adapter = "mock", provider = "local", model_family = "scripted", model = "m1", tools = [] }
  preflight {
    live               = "required" # one tool-free live call before the run spends anything
    unsupported_static = "block"    # an engine that cannot admit statically is not used
  }
}

graph "dag" {
  node "draft" {
    lane   = "writer"
    prompt = "Write one sentence about preflight checks."
  }
}
