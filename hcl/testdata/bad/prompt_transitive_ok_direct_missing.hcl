# want: Node "c" does not depend on "b"
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
  node "b" {
    lane       = "writer"
    prompt     = "b"
    depends_on = ["a"]
  }
  node "c" {
    lane       = "writer"
    depends_on = ["a"]
    prompt     = "${input.results.a} ${input.results.b}"
  }
}
