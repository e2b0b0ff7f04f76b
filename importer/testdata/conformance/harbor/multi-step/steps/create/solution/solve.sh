#!/bin/sh
echo hello | rev > /app/greeting.txt
