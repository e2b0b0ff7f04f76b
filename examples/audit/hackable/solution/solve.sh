#!/bin/sh
sed -i 's/\$1 - \$2/$1 + $2/' calc.sh
