# want: The result of engine node "draft" is text
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
  node "count" {
    binding    = "shell"
    depends_on = ["draft"]
    input      = { command = ["printf", "%s", "${input.results.draft.stdout}"] }
  }
}
