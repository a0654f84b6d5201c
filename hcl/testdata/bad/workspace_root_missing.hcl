# want: Workspace root does not exist
workspace {
  root = "no-such-directory"
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
