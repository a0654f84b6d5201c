# want: Dependency cycle: a → b → c → a
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
graph "dag" {
  node "a" {
    lane       = "writer"
    prompt     = "a"
    depends_on = ["b"]
  }
  node "b" {
    lane       = "writer"
    prompt     = "b"
    depends_on = ["c"]
  }
  node "c" {
    lane       = "writer"
    prompt     = "c"
    depends_on = ["a"]
  }
}
