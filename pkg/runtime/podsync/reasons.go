package podsync

import "errors"

// Waiting reasons, as the upstream kubelet reports them in container
// statuses (kubectl shows them in the STATUS column).
const (
	ReasonContainerCreating          = "ContainerCreating"
	ReasonCrashLoopBackOff           = "CrashLoopBackOff"
	ReasonErrImagePull               = "ErrImagePull"
	ReasonImagePullBackOff           = "ImagePullBackOff"
	ReasonErrImageNeverPull          = "ErrImageNeverPull"
	ReasonImageInspectError          = "ImageInspectError"
	ReasonCreateContainerConfigError = "CreateContainerConfigError"
	ReasonCreateContainerError       = "CreateContainerError"
	ReasonRunContainerError          = "RunContainerError"
	ReasonPostStartHookError         = "PostStartHookError"
)

// Event reasons, as upstream records them on the pod.
const (
	ReasonPulling                = "Pulling"
	ReasonPulled                 = "Pulled"
	ReasonFailed                 = "Failed"
	ReasonBackOff                = "BackOff"
	ReasonCreated                = "Created"
	ReasonStarted                = "Started"
	ReasonKilling                = "Killing"
	ReasonSandboxChanged         = "SandboxChanged"
	ReasonFailedCreatePodSandBox = "FailedCreatePodSandBox"
	ReasonFailedMount            = "FailedMount"
	ReasonFailedPostStartHook    = "FailedPostStartHook"
	ReasonFailedPreStopHook      = "FailedPreStopHook"
)

// Errors in SyncResult.Err and returned by the Syncer, for errors.Is. Each
// wraps the underlying runtime error.
var (
	ErrImagePull             = errors.New("image pull failed")
	ErrImagePullBackOff      = errors.New("image pull backing off")
	ErrImageNeverPull        = errors.New("image not present and pull policy is Never")
	ErrImageInspect          = errors.New("image inspection failed")
	ErrCreateContainerConfig = errors.New("cannot build container config")
	ErrCreateContainer       = errors.New("create container failed")
	ErrRunContainer          = errors.New("start container failed")
	ErrCreatePodSandbox      = errors.New("create pod sandbox failed")
	ErrPostStartHook         = errors.New("PostStartHook failed")
	// ErrStillRunning: RemovePod found containers or sandboxes still running;
	// kill the pod first.
	ErrStillRunning = errors.New("still running")
)
