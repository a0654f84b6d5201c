# want: Policy "guard" is never asked
plugin "engine" {
  type   = "engine"
  path   = "plugins/engine"
  sha256 = "2222222222222222222222222222222222222222222222222222222222222222"
}
plugin "guard" {
  type   = "policy"
  path   = "plugins/engine"
  sha256 = "2222222222222222222222222222222222222222222222222222222222222222"
}
lane "writer" {
  requested = { adapter = "engine", provider = "local", model_family = "scripted", model = "m1", tools = [] }
}
graph "dag" {
  node "a" {
    lane   = "writer"
    prompt = "a"
  }
}
