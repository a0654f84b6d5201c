# want: Adapter "guard" is a policy plugin
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
  requested = { adapter = "guard", provider = "local" }
}
graph "dag" {
  policy = ["guard"]
  node "a" {
    lane   = "writer"
    prompt = "a"
  }
}
