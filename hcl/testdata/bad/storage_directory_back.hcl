# want: Storage directory steps back out with ".."
storage {
  directory = "/root/../etc"
}
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
    lane   = "writer"
    prompt = "a"
  }
}
