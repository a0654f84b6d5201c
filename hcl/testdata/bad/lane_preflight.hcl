# want: Invalid live "always"
plugin "mock" {
  type = "engine"
  path = "bin/mock-engine"
}
plugin "shell" {
  type = "node"
  path = "bin/cmd-engine"
}
lane "writer" {
  requested = { adapter = "mock", provider = "local", model_family = "scripted", model = "m1", tools = [] }
  preflight {
    live               = "always"
    unsupported_static = "allow"
  }
}
graph "dag" {
  node "a" {
    lane   = "writer"
    prompt = "a"
  }
}
