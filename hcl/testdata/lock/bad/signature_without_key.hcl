# want: signature without key_id
plugin "a" {
  path      = "bin/a"
  sha256    = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
  signature = "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
}
