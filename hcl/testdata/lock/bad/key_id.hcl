# want: Invalid key_id
plugin "a" {
  path      = "bin/a"
  sha256    = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
  key_id    = "xyz"
  signature = "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
}
