# want: Plugin is not pinned
plugin "engine2" {
  type = "engine"
  path = "plugins/engine"
}
lane "writer" {
  requested = { adapter = "engine2", provider = "local", model_family = "scripted", model = "m1", tools = [] }
}
graph "dag" {
  node "a" {
    lane   = "writer"
    prompt = "a"
  }
}
