# want: Zero duration "0s"
plugin "mock" {
  type          = "engine"
  path          = "bin/mock-engine"
  start_timeout = "0s"
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
