#!/bin/sh
# The author of fix-until-green: reads the last failed test run (the
# loop's findings) on stdin and fixes the first function whose test
# failed. With nothing to read (round 1) it leaves the code as it is.
set -eu
dir=$1
first=$(grep -o -m 1 'FAIL: Test[A-Za-z]*' || true)
case $first in
"FAIL: TestAdd") sed -i '/func Add/s/return a - b/return a + b/' "$dir/calc.go"; echo "fixed Add" ;;
"FAIL: TestMul") sed -i '/func Mul/s/return a + b/return a * b/' "$dir/calc.go"; echo "fixed Mul" ;;
*) echo "nothing to fix yet" ;;
esac
