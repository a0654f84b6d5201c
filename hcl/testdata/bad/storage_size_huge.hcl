# want: max_artifact_bytes is too large
storage {
  max_artifact_bytes = 99999999999999999999
}
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
  node "a" {
    lane   = "writer"
    prompt = "a"
  }
}
