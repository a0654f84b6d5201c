# want: Duplicate plugin "mock"
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
plugin "mock" {
  type = "engine"
  path = "bin/other"
}
graph "dag" {
  node "a" {
    lane   = "writer"
    prompt = "a"
  }
}
