#!/bin/sh
echo "olleh, $(cat /app/name.txt)" > /app/greeting.txt
