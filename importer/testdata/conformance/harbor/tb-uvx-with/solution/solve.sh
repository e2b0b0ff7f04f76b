#!/bin/sh
printf "%s\n" 3 1 2 > /app/numbers.txt
