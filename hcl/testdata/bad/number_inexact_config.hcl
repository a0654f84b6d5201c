# want: Number cannot be recorded exactly
plugin "mock" {
  type   = "engine"
  path   = "bin/mock-engine"
  config = { responses = [{ node = "a", json = { "user id" = 123456789012345678901234567890, ok = 9007199254740992 } }] }
}
lane "writer" {
  requested = { adapter = "mock", provider = "local", model_family = "scripted", model = "m1", tools = [] }
}
graph "dag" {
  node "a" {
    lane   = "writer"
    prompt = "x"
  }
}
