# A small release graph guarded by the guard policy (examples/plugins/guard):
# every attempt is shown to it before it takes effect. It allows the checks
# and the summary, waits for a person before the publish step (its command
# holds "git push"), and denies the scratch step (it runs dd).

plugin "mock" {
  type = "engine"
  path = "../../bin/mock-engine"
}

plugin "shell" {
  type = "node"
  path = "../../bin/cmd-engine"
}

plugin "guard" {
  type = "policy"
  path = "../../bin/guard"
  config = {
    wait          = ["git push", "rm -rf", "curl"]
    deny_binaries = ["dd", "mkfs"]
  }
}

lane "writer" {
  requested = { adapter = "mock", provider = "local", model_family = "scripted", model = "m1", tools = [] }
}

graph "dag" {
  policy         = ["guard"]
  policy_timeout = "5s"

  node "check" {
    binding    = "shell"
    input      = { command = ["sh", "-c", "echo release notes > notes.txt && wc -w < notes.txt"] }
    retry_safe = true
  }
  node "summary" {
    lane       = "writer"
    depends_on = ["check"]
    prompt     = "Summarise a release whose notes have ${trimspace(input.results.check.stdout)} words."
  }
  node "publish" {
    binding    = "shell"
    depends_on = ["summary"]
    # Without a remote nothing leaves the machine; the guard waits all the same.
    input = { command = ["sh", "-c", "git push --dry-run origin main 2>/dev/null || echo 'no remote: nothing pushed'"] }
  }
  node "scratch" {
    binding = "shell"
    input   = { command = ["dd", "if=/dev/zero", "of=scratch.img", "bs=1k", "count=1"] }
  }
}
