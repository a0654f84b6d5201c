# This file is maintained by "obversa plugin lock". Manual edits may be lost.

plugin "shell" {
  path   = "bin/cmd-engine"
  sha256 = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
}

plugin "claude" {
  path      = "bin/cmd-engine"
  sha256    = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
  key_id    = "5bad1e5aa1b2c3d4"
  signature = "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
}
