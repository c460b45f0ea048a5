// Package credentialprovider runs the image credential provider plugins of
// --image-credential-provider-config and --image-credential-provider-bin-dir:
// the credentialprovider.kubelet.k8s.io exec protocol, as upstream's kubelet
// runs it (read from k8s.io/kubernetes pkg/credentialprovider/plugin for
// behaviour, not copied):
//
//   - the config (kubelet.config.k8s.io CredentialProviderConfig, a file or a
//     directory of *.json/*.yaml/*.yml files merged in name order) is read and
//     validated once at start; anything wrong with it, or a plugin missing from
//     the bin dir, stops nodelet with a message naming the field;
//   - a plugin is asked only for an image whose repository (registry host,
//     port, path, no tag or digest) matches one of its matchImages: as many
//     host labels, each matching as a glob ("*.azurecr.io"), equal ports, and
//     the pattern's path a prefix of the image's;
//   - the plugin gets a CredentialProviderRequest on stdin, runs for at most a
//     minute and answers a CredentialProviderResponse of the same apiVersion
//     on stdout; concurrent requests for one image share one run;
//   - its answer is cached by its cacheKeyType (Image: the repository;
//     Registry: the host and port; Global: everything the plugin matches) for
//     its cacheDuration, else the provider's defaultCacheDuration; a duration
//     of 0 caches nothing;
//   - its auth keys are matched against the image like pull-secret keys, and
//     the credentials come after those of the pod's pull secrets: the puller
//     tries the pod's own first, as upstream's does.
//
// A plugin that fails gives no credentials (the pull goes on with the others,
// or anonymously) and is logged; the credentials themselves are never logged.
// tokenAttributes (a service-account token sent to the plugin) is refused at
// start: nodelet does not request such tokens for plugins.
package credentialprovider
