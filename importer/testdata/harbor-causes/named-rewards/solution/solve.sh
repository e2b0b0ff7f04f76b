#!/bin/sh
seq 1 5 > /app/count.txt
