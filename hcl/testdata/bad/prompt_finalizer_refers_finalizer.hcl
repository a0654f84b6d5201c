# want: Finalizer "report2" refers to finalizer "report1"
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
  node "report1" {
    kind   = "finalizer"
    lane   = "writer"
    prompt = "${input.results.a}"
  }
  node "report2" {
    kind   = "finalizer"
    lane   = "writer"
    prompt = "${input.results.report1}"
  }
}
