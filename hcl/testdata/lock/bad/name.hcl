# want: Invalid plugin name "a b"
plugin "a b" {
  path   = "bin/a"
  sha256 = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
}
