# want: Missing path in plugin "a"
plugin "a" {
  sha256 = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
}
