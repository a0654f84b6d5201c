# want: Unknown node "drft" in reference input.results.drft
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
  node "draft" {
    lane   = "writer"
    prompt = "a"
  }
  node "b" {
    lane       = "writer"
    depends_on = ["draft"]
    prompt     = "${input.results.drft}"
  }
}
