#!/bin/sh
wget -qO- --post-data bolt http://inventory:7100/items
