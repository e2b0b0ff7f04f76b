#!/bin/sh
rev /app/seed.txt > /app/reversed.txt
