package main

import (
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"

	"ceval.dev/ceval/images"
)

func newImagesBuildInitCmd(g *globalOptions) *cobra.Command {
	var o images.InitOptions
	var out string
	cmd := &cobra.Command{
		Use:   "build-init [NAME] [-o FILE]",
		Short: "Build the init image a Kubernetes run's Pod installs ceval-init and ceval-mock from",
		// The default name is filled in when help is shown (initLongHelp): computing it hashes
		// the embedded init and mock client, ~3 ms that every other command paid.
		Long: "build-init writes the init image of this ceval (default name %s,\n" +
			"tagged by its binaries' sha256): one layer with /ceval-init and /ceval-mock (mode 0555, owned\n" +
			"0:0) and a static busybox that copies them into the Pod. Without -o it is imported into\n" +
			"containerd; for a Kubernetes node use its socket and namespace k8s.io:\n" +
			"  CEVAL_CONTAINERD_ADDRESS=NODE_SOCKET ceval images build-init --namespace k8s.io\n" +
			"With -o FILE it writes an OCI archive instead (no containerd needed) to push to a registry\n" +
			"or to import on the node with ceval images import --namespace k8s.io FILE. The same ceval\n" +
			"and busybox always give the same bytes.",
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 1 {
				o.Name = args[0]
				if o.Name == "" {
					return exitWith(exitInvalid, errors.New("build-init: NAME is empty (omit it for "+images.InitName()+")"))
				}
			}
			if o.Name == "" {
				o.Name = images.InitName()
			}
			start := time.Now()
			if out != "" {
				err := writeArchive(out, func(w io.Writer) error {
					_, err := images.WriteInit(w, o)
					return err
				})
				if err != nil {
					return exitWith(imagesExitCode(err), fmt.Errorf("build-init %s to %s: %w", o.Name, out, err))
				}
				fmt.Fprintf(cmd.OutOrStdout(), "wrote %s to %s in %s\n", o.Name, out, time.Since(start).Round(time.Millisecond))
				return nil
			}
			c, ctx, err := g.connect(cmd.Context(), cmd)
			if err != nil {
				return exitWith(exitInfraErr, err)
			}
			defer c.Close()
			img, err := images.BuildInit(ctx, c, o)
			if err != nil {
				return exitWith(imagesExitCode(err), err)
			}
			fmt.Fprintf(cmd.OutOrStdout(), "built %s in %s\n", img.Name, time.Since(start).Round(time.Millisecond))
			printImage(cmd.OutOrStdout(), img)
			return nil
		},
	}
	cmd.Flags().StringVar(&o.Busybox, "busybox", images.DefaultBusybox, "statically linked busybox to put in the image (Debian: apt-get install busybox-static)")
	cmd.Flags().StringVarP(&out, "output", "o", "", "write an OCI archive to this file instead of importing into containerd (replaced only once complete)")
	initLongHelp(cmd)
	return cmd
}

// initLongHelp puts the default init image name into cmd's Long text when its help is shown.
func initLongHelp(cmd *cobra.Command) {
	long := cmd.Long
	cmd.SetHelpFunc(func(c *cobra.Command, args []string) {
		c.Long = fmt.Sprintf(long, images.InitName())
		c.SetHelpFunc(nil) // back to the inherited help, now with the name
		c.HelpFunc()(c, args)
	})
}
