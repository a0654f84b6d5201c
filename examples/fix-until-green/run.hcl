# Fix until green: an author step edits a Go file, the review is the real
# test suite (`go test`), and the loop goes round until the tests pass.
# Offline: the author is fix.sh, which reads the failed test run of the
# previous round (${loop.findings}) and fixes the first function it names.
#
#   make demo-fix-until-green   # builds, pins and runs this file
#
# setup  — copies the package with two bugs (testdata/calc) to work/.
# green  — a loop, at most 4 rounds:
#          fix   the author: edits work/calc.go from the last findings;
#          test  the review: `go test ./...`, green passes it; a failure's
#                output tail is the finding the next round reads.

workspace {
  root     = "."
  provider = "none"
}

storage {
  directory = ".obversa"
}

plugin "shell" {
  type = "node"
  path = "../../bin/cmd-engine"
  # Plugins write only the workspace, the run's scratch directory and their
  # state directory (docs/confinement.md); go test keeps its build cache in
  # the user's cache directory.
  confine {
    write = ["~/.cache/go-build"]
  }
}

graph "dag" {
  node "setup" {
    binding    = "shell"
    input      = { command = ["sh", "-c", "rm -rf work && cp -R testdata/calc work"] }
    retry_safe = true
  }

  loop "green" {
    depends_on = ["setup"]
    max_rounds = 4
    review     = "test"

    node "fix" {
      binding    = "shell"
      input      = { command = ["sh", "fix.sh", "work"], stdin = "${loop.findings}" }
      retry_safe = true
    }

    node "test" {
      binding    = "shell"
      depends_on = ["fix"]
      input      = { command = ["sh", "-c", "cd work && go test ./..."], timeout = "5m" }
      retry_safe = true
    }
  }

  node "report" {
    depends_on = ["green"]
    binding    = "shell"
    input      = { command = ["cat", "work/calc.go"] }
  }
}
