# want: Workspace root is not a directory
workspace {
  root = "workspace_root_file.hcl"
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
