/**
 * The tokenizer classes of transformers 5.18.0 (the release a fresh vLLM
 * install resolves), as `models/auto/tokenization_auto.py` registers them in
 * an environment with sentencepiece and mistral_common (vLLM's
 * requirements): data for the class rule in `rebuilt.ts`, whose decisions
 * tests/conformance/tokenizer_class_test.ts compares with transformers.
 *
 * @module
 */

/** The release the tables are read from. */
export const TRANSFORMERS_RELEASE = "5.18.0";

/**
 * TOKENIZER_MAPPING_NAMES: each class (its name without `Fast`) and, after
 * the colon, the model types registered to it.
 */
export const REGISTERED: string =
  "AlbertTokenizer:albert,yoso BartTokenizer:florence2 " +
  "BarthezTokenizer:barthez BartphoTokenizer:bartpho " +
  "BertGenerationTokenizer:bert-generation " +
  "BertJapaneseTokenizer:bert-japanese " +
  "BertTokenizer:align,bark,bert,blip,bros,chinese_clip,convbert,distilbert,electra,ernie,flava,git,grounding-dino,layoutlm,megatron-bert,mm-grounding-dino,nezha,nomic_bert,qdqbert,realm,retribert,squeezebert,tvp,vilt,visual_bert " +
  "BertweetTokenizer:bertweet BigBirdTokenizer:big_bird " +
  "BioGptTokenizer:biogpt BlenderbotSmallTokenizer:blenderbot-small " +
  "BlenderbotTokenizer:blenderbot ByT5Tokenizer:byt5 " +
  "CLIPTokenizer:aimv2,clip,clipseg,groupvit,omdet-turbo,oneformer,owlv2,owlvit,sam3,sam3_video,xclip " +
  "CTRLTokenizer:ctrl CamembertTokenizer:camembert CanineTokenizer:canine " +
  "ClvpTokenizer:clvp CodeLlamaTokenizer:code_llama " +
  "CohereTokenizer:aya_vision,cohere,cohere2 CpmAntTokenizer:cpmant " +
  "CpmTokenizer:cpm DPRQuestionEncoderTokenizer:dpr DebertaTokenizer:deberta " +
  "DebertaV2Tokenizer:deberta-v2 DiaTokenizer:dia EsmTokenizer:esm " +
  "EsmcTokenizer:esmc,esmfold2 FNetTokenizer:fnet FSMTTokenizer:fsmt " +
  "FlaubertTokenizer:flaubert FunnelTokenizer:funnel " +
  "GPT2Tokenizer:blip-2,codegen,dbrx,emu3,gpt2,gpt_neo,gptj,hyperclovax_vision_v2,instructblip,instructblipvideo,jais2,opt,phi,starcoder2 " +
  "GPTNeoXJapaneseTokenizer:gpt_neox_japanese " +
  "GPTNeoXTokenizer:falcon_mamba,gpt_neox,mamba,mamba2,mpt,olmo,olmoe,rwkv,xlstm " +
  "GPTSw3Tokenizer:gpt-sw3 " +
  "GemmaTokenizer:diffusion_gemma,gemma,gemma2,gemma3,gemma3_text,gemma3n,gemma3n_text,recurrent_gemma,shieldgemma2,t5gemma,zaya " +
  "HerbertTokenizer:herbert LEDTokenizer:led " +
  "LasrTokenizer:lasr_ctc,lasr_encoder LayoutLMv2Tokenizer:layoutlmv2 " +
  "LayoutLMv3Tokenizer:layoutlmv3 LayoutXLMTokenizer:layoutxlm " +
  "LlamaTokenizer:idefics,idefics2 LukeTokenizer:luke LxmertTokenizer:lxmert " +
  "M2M100Tokenizer:m2m_100 MBart50Tokenizer:mbart50 MBartTokenizer:mbart " +
  "MLukeTokenizer:mluke MPNetTokenizer:mpnet MarianTokenizer:marian " +
  "MarkupLMTokenizer:markuplm MgpstrTokenizer:mgp-str " +
  "MistralCommonBackend:ministral,ministral3,mistral,mistral3,mixtral,pixtral,voxtral,voxtral_realtime " +
  "MobileBertTokenizer:mobilebert MvpTokenizer:mvp MyT5Tokenizer:myt5 " +
  "NllbTokenizer:nllb,nllb-moe NougatTokenizer:nougat,pp_formulanet " +
  "OpenAIGPTTokenizer:openai-gpt PLBartTokenizer:plbart " +
  "ParakeetTokenizer:granite_speech5_ctc,nemotron3_5_asr,nemotron_asr_streaming,parakeet_ctc,parakeet_rnnt,parakeet_tdt " +
  "PegasusTokenizer:pegasus PerceiverTokenizer:perceiver " +
  "PhobertTokenizer:phobert ProphetNetTokenizer:prophetnet " +
  "Qwen2Tokenizer:audioflamingo3,colqwen2,cosmos3_omni,fun_asr_nano,hunyuan_vl,internvl,lighton_ocr,ovis2,qianfan_ocr,qwen2,qwen2_5_omni,qwen2_5_vl,qwen2_audio,qwen2_moe,qwen2_vl,qwen3,qwen3_asr,qwen3_moe,qwen3_next,qwen3_omni_moe,qwen3_vl,qwen3_vl_moe,vibevoice " +
  "Qwen3_5Tokenizer:qwen3_5,qwen3_5_moe,qwen3_5_moe_text,qwen3_5_text,qwen4_exp " +
  "RagTokenizer:rag ReformerTokenizer:reformer RemBertTokenizer:rembert " +
  "RoCBertTokenizer:roc_bert RoFormerTokenizer:roformer " +
  "RobertaTokenizer:bart,bridgetower,clap,data2vec-text,ibert,lilt,longformer,mega,mra,roberta,roberta-prelayernorm " +
  "SeamlessM4TTokenizer:seamless_m4t,seamless_m4t_v2 Siglip2Tokenizer:siglip2 " +
  "SiglipTokenizer:siglip Speech2TextTokenizer:speech_to_text " +
  "SpeechT5Tokenizer:speecht5 SplinterTokenizer:splinter " +
  "T5Tokenizer:mt5,musicgen,musicgen_melody,switch_transformers,t5 " +
  "TapasTokenizer:tapas Tipsv2Tokenizer:tipsv2 " +
  "TokenizersBackend:EvollaModel,arctic,aria,bigbird_pegasus,camembertv2-base,canary,chameleon,chatlm,cohere_asr,deepseek_ocr,deepseek_ocr2,deepseek_v2,deepseek_v3,deepseek_v32,deepseek_v4,deepseek_vl,deepseek_vl_hybrid,deepseek_vl_v2,ernie4_5,ernie4_5_moe,flex_olmo,fuyu,glm,glm4,glm4_moe,glm4_moe_lite,glm4v,glm4v_moe,glm_image,glmasr,got_ocr2,gpt_bigcode,granite,granitemoe,granitemoehybrid,granitemoeshared,h2ovl_chat,hyperclovax,hyperclovax_vlm,internlm2,jamba,janus,kimi_k25,kimi_linear,kosmos-2,llava,llava_next,mimo_v2_flash,minicpm3,minicpmv,minicpmv4_6,minicpmv4_7,minimax_m2,modernbert,modernbert-decoder,molmo,molmo2,nemotron,nvfp4,nystromformer,olmo2,olmo3,olmo_hybrid,opencua,openvla,paddleocr_vl,pegasus_x,persimmon,phi3,phi3_v,phimoe,pix2struct,smolvlm,stablelm,step3_vl,step3p5,umt5,vipllava,xlm-roberta-xl " +
  "UdopTokenizer:udop VideoPrismTokenizer:videoprism VitsTokenizer:vits " +
  "Wav2Vec2CTCTokenizer:data2vec-audio,hubert,unispeech,unispeech-sat,wav2vec2,wav2vec2-bert,wav2vec2-conformer " +
  "Wav2Vec2PhonemeCTCTokenizer:wav2vec2_phoneme WhisperTokenizer:whisper " +
  "XGLMTokenizer:xglm " +
  "XLMRobertaTokenizer:gte,jina_embeddings_v3,metaclip_2,trocr,xlm-roberta,xmod " +
  "XLMTokenizer:xlm XLNetTokenizer:xlnet";

/** MODELS_WITH_INCORRECT_HUB_TOKENIZER_CLASS. */
export const INCORRECT_HUB_CLASS: string =
  "arctic camembertv2-base chameleon chatlm cohere_asr deepseek_ocr " +
  "deepseek_ocr2 deepseek_v2 deepseek_v3 deepseek_v32 deepseek_v4 deepseek_vl " +
  "deepseek_vl_hybrid deepseek_vl_v2 ernie4_5 ernie4_5_moe fuyu h2ovl_chat " +
  "hyperclovax hyperclovax_vision_v2 hyperclovax_vlm internlm2 jamba janus " +
  "llava llava_next minicpm3 minicpmv minimax_m2 modernbert " +
  "modernbert-decoder molmo molmo2 nemotron nvfp4 opencua openvla " +
  "paddleocr_vl phi3 phi3_v phimoe qwen2 qwen3_5 qwen3_5_moe qwen3_5_moe_text " +
  "qwen4_exp smolvlm step3_vl step3p5 vipllava";

/**
 * The classes `tokenizer_class_from_name` finds whose own `__init__` builds
 * the tokenizer from the vocabulary, so that `convert_to_native_format`
 * does not keep `tokenizer.json` as written (names without `Fast`; those
 * needing sentencepiece included, as vLLM installs it).
 */
export const REBUILDING: string =
  "AlbertTokenizer BartTokenizer BarthezTokenizer BartphoTokenizer " +
  "BasicTokenizer BertGenerationTokenizer BertJapaneseTokenizer BertTokenizer " +
  "BertweetTokenizer BigBirdTokenizer BioGptTokenizer " +
  "BlenderbotSmallTokenizer BlenderbotTokenizer ByT5Tokenizer CLIPTokenizer " +
  "CTRLTokenizer CamembertTokenizer CanineTokenizer CharacterTokenizer " +
  "ClvpTokenizer CodeGenTokenizer CodeLlamaTokenizer CohereTokenizer " +
  "CpmAntTokenizer CpmTokenizer DPRContextEncoderTokenizer " +
  "DPRQuestionEncoderTokenizer DPRReaderTokenizer DebertaTokenizer " +
  "DebertaV2Tokenizer DiaTokenizer DistilBertTokenizer EsmTokenizer " +
  "EsmcTokenizer FSMTTokenizer FastSpeech2ConformerTokenizer " +
  "FlaubertTokenizer FunnelTokenizer GPT2Tokenizer GPTNeoXJapaneseTokenizer " +
  "GPTNeoXTokenizer GPTSw3Tokenizer GemmaTokenizer HerbertTokenizer " +
  "LEDTokenizer LasrTokenizer LayoutLMv2Tokenizer LayoutLMv3Tokenizer " +
  "LayoutXLMTokenizer LlamaTokenizer LukeTokenizer LxmertTokenizer " +
  "M2M100Tokenizer MBart50Tokenizer MBartTokenizer MLukeTokenizer " +
  "MPNetTokenizer MarianTokenizer MarkupLMTokenizer MecabTokenizer " +
  "MgpstrTokenizer MobileBertTokenizer MvpTokenizer MyT5Tokenizer " +
  "NllbTokenizer NougatTokenizer OpenAIGPTTokenizer PLBartTokenizer " +
  "PegasusTokenizer PerceiverTokenizer PhobertTokenizer Pop2PianoTokenizer " +
  "ProphetNetTokenizer Qwen2Tokenizer Qwen3_5Tokenizer RagTokenizer " +
  "ReformerTokenizer RemBertTokenizer RoCBertTokenizer RoFormerTokenizer " +
  "RobertaTokenizer SeamlessM4TTokenizer Siglip2Tokenizer SiglipTokenizer " +
  "Speech2TextTokenizer SpeechT5Tokenizer SplinterTokenizer " +
  "SqueezeBertTokenizer T5Tokenizer TapasTokenizer Tipsv2Tokenizer " +
  "UdopTokenizer VideoPrismTokenizer VitsTokenizer Wav2Vec2CTCTokenizer " +
  "Wav2Vec2PhonemeCTCTokenizer WhisperTokenizer WordpieceTokenizer " +
  "XGLMTokenizer XLMRobertaTokenizer XLMTokenizer XLNetTokenizer";
