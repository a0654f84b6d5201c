# want: Plugin pins disagree
plugin "pinned" {
  type   = "engine"
  path   = "plugins/engine"
  sha256 = "1111111111111111111111111111111111111111111111111111111111111111"
}
lane "writer" {
  requested = { adapter = "pinned", provider = "local", model_family = "scripted", model = "m1", tools = [] }
}
graph "dag" {
  node "a" {
    lane   = "writer"
    prompt = "a"
  }
}
