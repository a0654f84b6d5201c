# want: Plugin path is not a regular file
plugin "mock" {
  type   = "engine"
  path   = "."
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
