# want: Plugin binary not found
plugin "mock" {
  type   = "engine"
  path   = "plugins/no-such-engine"
  sha256 = "0000000000000000000000000000000000000000000000000000000000000000"
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
