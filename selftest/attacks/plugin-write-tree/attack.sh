. ./lib.sh
K=/opt/ceval/plugins/kit
attempt "list the projected plugin" ls -laR $K
wrote() { proof "$1"; }
attempt "overwrite SKILL.md" sh -c "echo pwned >$K/skills/fix/SKILL.md" && wrote "overwrote SKILL.md"
attempt "append to SKILL.md" sh -c "echo pwned >>$K/skills/fix/SKILL.md" && wrote "appended to SKILL.md"
attempt "create a file" sh -c "echo x >$K/skills/planted.md" && wrote "planted a file"
attempt "create a directory" mkdir $K/skills/d && wrote "made a directory"
attempt "chmod SKILL.md" chmod 666 $K/skills/fix/SKILL.md && wrote "chmod"
attempt "chmod the tree" chmod 777 $K/skills && wrote "chmod the tree"
attempt "delete SKILL.md" rm -f $K/skills/fix/SKILL.md
[ -e $K/skills/fix/SKILL.md ] || wrote "deleted SKILL.md"
attempt "rename commands/go.md" mv $K/commands/go.md $K/commands/gone.md && wrote "renamed"
attempt "plant a symlink" ln -s /etc/passwd $K/skills/pw && wrote "linked"
attempt "touch a timestamp" touch -d 2001-01-01 $K/commands/go.md && wrote "touched"
attempt "remount read-write" mount -o remount,rw $K && wrote "remounted"
attempt "unmount the plugin" umount $K && wrote "unmounted"
true
