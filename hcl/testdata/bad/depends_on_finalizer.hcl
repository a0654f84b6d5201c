# want: Node "b" depends on finalizer "report"
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
  node "report" {
    kind   = "finalizer"
    lane   = "writer"
    prompt = "done"
  }
  node "b" {
    lane       = "writer"
    prompt     = "b"
    depends_on = ["report"]
  }
}
