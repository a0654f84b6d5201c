# want: key_id without signature
plugin "a" {
  path   = "bin/a"
  sha256 = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
  key_id = "5BAD1E5AA1B2C3D4"
}
