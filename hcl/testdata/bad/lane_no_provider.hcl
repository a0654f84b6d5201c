# want: Lane "writer": the requested target has no provider
plugin "mock" {
  type = "engine"
  path = "bin/mock-engine"
}
plugin "shell" {
  type = "node"
  path = "bin/cmd-engine"
}
plugin "guard" {
  type = "policy"
  path = "bin/guard"
}
lane "writer" {
  requested = { adapter = "mock", model_family = "scripted", model = "m1" }
}
graph "dag" {
  policy = ["guard"]
  node "a" {
    lane   = "writer"
    prompt = "a"
  }
}
