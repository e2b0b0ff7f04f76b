#!/bin/sh
printf '2\n3\n5\n7\n11\n' > /workspace/primes.txt
