# want: global_concurrency is too large
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
  global_concurrency = 1e20 * 1
  node "a" {
    lane   = "writer"
    prompt = "a"
  }
}
