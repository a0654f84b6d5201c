# want: Invalid duration "30"
plugin "mock" {
  type          = "engine"
  path          = "bin/mock-engine"
  start_timeout = 30
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
