# want: retry_cap_per_node is too small
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
  retry_cap_per_node = -1
  node "a" {
    lane   = "writer"
    prompt = "a"
  }
}
