#!/bin/sh
printf "%s\n" 3 1 2 > /workspace/numbers.txt
