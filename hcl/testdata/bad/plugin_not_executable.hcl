# want: Plugin binary is not executable
plugin "mock" {
  type   = "engine"
  path   = "plugins/not-executable"
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
