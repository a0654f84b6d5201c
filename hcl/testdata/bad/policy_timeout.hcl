# want: Zero duration "0s"
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
  requested = { adapter = "mock", provider = "local", model_family = "scripted", model = "m1", tools = [] }
}
graph "dag" {
  policy         = ["guard"]
  policy_timeout = "0s"
  node "a" {
    lane   = "writer"
    prompt = "a"
  }
}
