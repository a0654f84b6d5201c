# want: Invalid environment variable name "LOG-LEVEL"
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
}
plugin "extra" {
  type = "node"
  path = "bin/x"
  env  = { "LOG-LEVEL" = "debug" }
}
graph "dag" {
  node "a" {
    lane   = "writer"
    prompt = "a"
  }
}
