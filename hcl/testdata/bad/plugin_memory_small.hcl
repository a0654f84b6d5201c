# want: plugin_memory is too small
limits {
  plugin_memory = 1000
}
plugin "mock" {
  type = "engine"
  path = "bin/mock-engine"
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
