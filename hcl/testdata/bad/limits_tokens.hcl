# want: max_output_tokens is too small
plugin "mock" {
  type = "engine"
  path = "bin/mock-engine"
}
plugin "shell" {
  type = "node"
  path = "bin/cmd-engine"
}
plugin "guard" {
  type = "policy"
  path = "bin/guard"
}
lane "writer" {
  requested = { adapter = "mock", provider = "local", model_family = "scripted", model = "m1", tools = [] }
}
limits {
  max_input_tokens  = 1000
  max_output_tokens = 0
}
graph "dag" {
  policy = ["guard"]
  node "a" {
    lane   = "writer"
    prompt = "a"
  }
}
